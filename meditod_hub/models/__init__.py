"""Model families and their formats, training, and the one way to reach a model (a run folder, a
Hub id, an endpoint)."""
