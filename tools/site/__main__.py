"""`python -m tools.site --output DIR`: the entry point of the course's static site (tools.site.main)."""
import sys

from tools.site import main

sys.exit(main())
