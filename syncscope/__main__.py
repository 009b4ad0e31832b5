from syncscope.cli import main

main()
