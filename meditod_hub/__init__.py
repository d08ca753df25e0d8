"""MediTOD Hub kit: the dataset, its models, their evaluation and the apps (`meditod -h`)."""

from . import quiet

quiet.install()
