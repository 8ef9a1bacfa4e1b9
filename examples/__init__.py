"""A small self-made example project: synthetic melodies rendered to real audio for the demo."""
