"""`python -m course_utils`: the command line (course_utils.cli)."""
import sys

from course_utils.cli import main

if __name__ == "__main__":
    sys.exit(main())
