import LimelightCLI

await LimelightCommand.main()
