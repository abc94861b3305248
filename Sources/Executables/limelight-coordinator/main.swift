import LimelightCLI

await CoordinatorCommand.main()
