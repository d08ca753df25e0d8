"""The annotation portal: questionnaire-based CMAS labelling in the browser (`meditod annotate`).

`store` reads and saves a release folder (validated, atomic, version-checked, format-preserving
through `jsondoc`), with a module for each of its other jobs: `labels` (a dialogue's labels and
states), `versions` (merging two editors' saves), `origins` (where each label came from), `splits`
(the id files), `vocabulary` (the values offered) and `transcript` (importing one); `schema` +
`questions.json` say what the questionnaire asks, `assist` gets model suggestions from
`meditod_hub.models.predictor`, `server` serves `static/`, `hosted` adds the Hub login and private
backups of a Space, `serve` is the command.
"""
