"""Dataset and model cards, Hub pushes and Spaces."""
