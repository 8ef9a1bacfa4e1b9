"""Jinja2 templates of the HITs, shared by the MTurk and in-house web crowds.

Rendered by :func:`crowdprefs.hits.render.render_preference_hit`.
"""
