import sys

from zfsmon.cli import main

sys.exit(main())
