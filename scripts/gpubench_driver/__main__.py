import sys

from gpubench_driver.commands.cli import main

sys.exit(main(sys.argv[1:]))
