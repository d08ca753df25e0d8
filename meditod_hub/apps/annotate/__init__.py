"""The annotation portal: questionnaire-based CMAS labelling in the browser (`meditod annotate`).

`store` reads and saves a release folder (validated, atomic, version-checked, format-preserving
through `jsondoc`), `schema` + `questions.json` say what the questionnaire asks, `assist` gets
model suggestions from `meditod_hub.models.predictor`, `app` serves `static/`, `space` adds the Hub login
and private backups of a Space, `serve` is the command.
"""
