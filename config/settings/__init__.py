"""Settings package: ``base`` holds everything; ``local``, ``test`` and ``production`` adjust it.

Select one with ``DJANGO_SETTINGS_MODULE`` (``manage.py`` defaults to ``local``).
"""
