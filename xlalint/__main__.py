from xlalint.cli import main

main()
