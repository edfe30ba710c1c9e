"""`python -m course_utils.site --output DIR`: the course's static site, the same as `python -m course_utils site`.

Only the entry point: the build and its options are course_utils.site (build_site, add_site_parser, main); this
module holds no code of its own and is not about the library or the notebooks.

Introduced in: the lecture kit (issue 14); not used by the notebooks themselves.
"""
import sys

from course_utils.site import main

__all__: list[str] = []

sys.exit(main())
