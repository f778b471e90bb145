from samedevice.cli import main

raise SystemExit(main())
