"""crowdprefs: crowdsourced partially ordered ground truths for music similarity.

The library is usable without the command line: every command is a call to a documented
function of the packages below, taking and returning plain Python, numpy or pandas objects.

``campaign``    a project, its settings and state, the driver of the sort, aggregation, budget
``crowds``      where answers come from: simulated workers, MTurk (and its local fake), the web
``hits``        the HIT pages, clip hosting, previews
``web``         the judges' server
``quality``     auditing workers, review, the crowd model, planning a campaign
``evaluation``  measures, evaluating systems, significance, power, GAWM, MTC
``demo``        the whole pipeline on synthetic melodies (:func:`crowdprefs.demo.run_demo`)
``cli``         the ``crowdprefs`` command (``python -m crowdprefs``)

Importing ``crowdprefs`` imports none of them.
"""

__version__ = "0.1.0"
