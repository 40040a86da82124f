import sys

from zocrates_nb.cli import main

sys.exit(main())
