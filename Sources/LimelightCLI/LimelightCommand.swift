import ArgumentParser
import Foundation

/// `limelight`: the command-line client, and `limelight up` to run a whole cluster on one machine.
public struct LimelightCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "limelight",
        abstract: "Spotlight-style search for Linux servers.",
        discussion: """
        Exit codes: 0 success; 1 some items rejected; 2 bad input (the message names the position); \
        3 server unreachable; 4 result lacks shards (named on standard error); 5 some items never \
        acknowledged; 6 the server refused the key.
        """,
        subcommands: [UpCommand.self, PublishCommand.self, QueryCommand.self, PredicateCommand.self, SearchCommand.self,
                      DeleteCommand.self, DeclareCommand.self, StatsCommand.self, EmbedCommand.self,
                      EntitiesCommand.self, SuggestCommand.self, SpotlightCommand.self, ContinueCommand.self, KeysCommand.self])

    public init() {}
}
