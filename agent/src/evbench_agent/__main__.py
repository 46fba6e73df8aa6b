from evbench_agent.cli import main

main()
