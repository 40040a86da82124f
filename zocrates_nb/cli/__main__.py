"""`python -m zocrates_nb.cli`: the same CLI as the `zocrates-nb` command."""

import sys

from zocrates_nb.cli import main

sys.exit(main())
