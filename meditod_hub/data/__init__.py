"""A release folder becomes validated dialogues, the tasks' rows and the built dataset."""
