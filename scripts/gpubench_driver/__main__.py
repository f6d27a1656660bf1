import sys

from gpubench_driver.cli import main

sys.exit(main(sys.argv[1:]))
