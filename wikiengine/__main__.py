from wikiengine.cli import main

raise SystemExit(main())
