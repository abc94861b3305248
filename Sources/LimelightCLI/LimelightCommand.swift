import ArgumentParser
import Foundation

/// `limelight`: the command-line client, and `limelight up` to run a whole cluster on one machine.
package struct LimelightCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "limelight",
        abstract: "Spotlight-style search for Linux servers.",
        discussion: """
            Exit codes: 0 success; 1 some items rejected; 2 bad input (the message names the position); \
            3 server unreachable; 4 result lacks shards (named on standard error); 5 some items never \
            acknowledged; 6 the server refused the key.
            """,
        subcommands: [
            UpCommand.self, PublishCommand.self, QueryCommand.self, PredicateCommand.self, SearchCommand.self,
            DeleteCommand.self, DeclareCommand.self, StatsCommand.self, EmbedCommand.self,
            EntitiesCommand.self, SuggestCommand.self, SpotlightCommand.self, ContinueCommand.self, KeysCommand.self,
            ControlPlaneCommand.self, ShardsCommand.self,
        ])

    package init() {}

    /// Parses the command line and runs the command, as ArgumentParser's
    /// `main()` does, with two rules of DESIGN.md's command line for the
    /// commands that take a query (`query`, `predicate`):
    /// - a query that begins with `-` is the query, not an unknown option
    ///   (`limelight predicate -- '…'` works too, as ArgumentParser has it);
    /// - arguments ArgumentParser rejects are bad input: exit 2, with its
    ///   message, which names the argument (other commands keep its 64).
    package static func runCommandLine(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) async -> Never {
        let takesQuery = QueryArguments.takesQuery(arguments)
        let command: ParsableCommand
        do {
            command = takesQuery ? try QueryArguments.parse(arguments) { try parseAsRoot($0) } : try parseAsRoot(arguments)
        } catch {
            if takesQuery, exitCode(for: error) == .validationFailure {
                printError(fullMessage(for: error))
                Foundation.exit(ExitCodes.badInput)
            }
            exit(withError: error)
        }
        do {
            if var command = command as? AsyncParsableCommand { try await command.run() } else { var c = command; try c.run() }
        } catch {
            exit(withError: error)
        }
        Foundation.exit(0)
    }
}

/// The command lines of `limelight query` and `limelight predicate`, whose one
/// positional argument is a query that may begin with `-`.
enum QueryArguments {
    static func takesQuery(_ arguments: [String]) -> Bool {
        ["query", "predicate"].contains(arguments.first ?? "")
    }

    /// `arguments` parsed as they are when they parse; otherwise, when moving
    /// one argument that begins with `-` behind a `--` makes them parse, that
    /// way (the first such argument, in order, is the query); otherwise the
    /// first error.
    static func parse<T>(_ arguments: [String], _ parse: ([String]) throws -> T) throws -> T {
        let firstError: Error
        do { return try parse(arguments) } catch { firstError = error }
        let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
        for i in arguments.indices.dropFirst() where i < end && arguments[i].hasPrefix("-") && arguments[i] != "-" {
            var moved = arguments
            let query = moved.remove(at: i)
            if let dashes = moved.firstIndex(of: "--") { moved.insert(query, at: dashes + 1) } else { moved += ["--", query] }
            if let parsed = try? parse(moved) { return parsed }
        }
        throw firstError
    }
}
