from streamops.cli import main

raise SystemExit(main())
