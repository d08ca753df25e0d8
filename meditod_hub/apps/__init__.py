"""The assistant (terminal chat, web app) and the annotation portal."""
