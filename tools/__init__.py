"""The course's tooling, run from the repository root and not installed with course_utils: the static site
(`python -m tools.site`). It imports the library; the library never imports it."""
