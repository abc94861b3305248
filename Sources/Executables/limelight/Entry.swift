import LimelightCLI

/// A thin entry point: the command lives in LimelightCLI, where tests can reach it.
@main
enum Entry {
    static func main() async {
        await LimelightCommand.runCommandLine()
    }
}
