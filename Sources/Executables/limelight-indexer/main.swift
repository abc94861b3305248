import LimelightCLI

await IndexerCommand.main()
