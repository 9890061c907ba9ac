"""`python -m adk_oceanbase`: the same command line as `adk-oceanbase`."""

import sys

from .cli import main

sys.exit(main())
