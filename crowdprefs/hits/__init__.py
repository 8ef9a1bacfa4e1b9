"""HITs: rendering the jinja2 templates, hosting the clips, previews."""
