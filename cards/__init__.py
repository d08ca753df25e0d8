"""The dataset and model card templates (Jinja, rendered by huggingface_hub), shipped inside the
wheel as the package `meditod_hub.cards` (see pyproject.toml)."""
