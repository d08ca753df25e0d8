"""MediTOD Hub kit: the dataset, its models, their evaluation and the apps (`meditod -h`)."""

from meditod_hub import quiet

quiet.install()
