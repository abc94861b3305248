import LimelightCLI

await QueryWorkerCommand.main()
