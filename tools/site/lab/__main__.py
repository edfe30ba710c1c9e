"""`python -m tools.site.lab --output DIR [--model NAME] [--fast]`: export the attention lab (tools.site.lab)."""
import sys

from tools.site.lab.cli import main

sys.exit(main())
