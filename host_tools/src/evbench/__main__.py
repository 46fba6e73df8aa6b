from evbench.cli import main

main()
