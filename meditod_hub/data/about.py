"""What MediTOD is and how to cite it: constants shared by the dataset and model cards. Only
pages about MediTOD's own data show SUMMARY, LICENCE_NOTE and SOURCE_CITATION
(`provenance.Provenance.meditod` decides); other data cites the paper for its schema alone."""

PRETTY_NAME = "MediTOD"
PAPER = "https://arxiv.org/abs/2410.14204"
HOMEPAGE = "https://github.com/dair-iitd/MediTOD"
SUMMARY = (
    "MediTOD is an English dataset of doctor-patient dialogues for medical history taking "
    "(paper: 233 dialogues, 22.5k utterances; respiratory cases in-domain, musculoskeletal "
    "out-of-domain), annotated with the Comprehensive Medical Attribute Schema (CMAS): intents, "
    "slots and their linked attributes, medical values canonicalised to UMLS concepts. It "
    "defines three task-oriented dialogue tasks: NLU, POL and NLG."
)
LICENCE_NOTE = (
    "The canonical labels are UMLS-derived: the authors release the full data only to UMLS "
    "licensees through a request form. Any copy of the real data must stay gated behind the same "
    "condition. The source dialogues are the simulated interviews of Fareez et al. (2022)."
)
SCHEMA_NOTE = (
    "Labelled with the Comprehensive Medical Attribute Schema (CMAS) of the MediTOD paper, cited "
    "for the schema; the dialogues are not MediTOD's."
)
CITATION = """@article{saley2024meditod,
  title   = {MediTOD: An English Dialogue Dataset for Medical History Taking with Comprehensive Annotations},
  author  = {Saley, Vishal Vivek and Saha, Goonjan and Das, Rocktim Jyoti and Raghu, Dinesh and Mausam},
  journal = {arXiv preprint arXiv:2410.14204},
  year    = {2024}
}"""
SOURCE_CITATION = """@article{fareez2022dataset,
  title   = {A dataset of simulated patient-physician medical interviews with a focus on respiratory cases},
  author  = {Fareez, Faiha and Parikh, Tishya and Wavell, Christopher and Shahab, Saba and Chevalier, Meghan and Good, Scott and De Blasi, Isabella and Rhouma, Rafik and McMahon, Christopher and Lam, Jean-Paul and others},
  journal = {Scientific Data},
  volume  = {9},
  number  = {1},
  pages   = {313},
  year    = {2022}
}"""
