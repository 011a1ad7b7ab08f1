from tutormetrics.cli import main

main()
