import sys

from fedcheck.cli import main

sys.exit(main())
