"""Prolific: a study recruits participants for the project's own web server.

``crowd``   the adapter (:class:`~crowdprefs.crowds.prolific.crowd.ProlificCrowd`): the study's
            places, time and reward from the project, publishing, topping up, status, reviews
            and bonuses.
``client``  the calls to Prolific's REST API (httpx; the token from ``PROLIFIC_TOKEN`` only).
``fake``    a local fake of that API on 127.0.0.1 that refuses what Prolific refuses.
"""
