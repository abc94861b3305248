import Foundation
import Items
import LimelightClient
import Testing

/// `limelight predicate` as a user runs it: real processes, real exit codes.
@Suite(.serialized)
struct PredicateCommandTests {
    @Test func predicatePagesPrintTheCursorLastOnStandardError() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let ep = ["--endpoint", cluster.clientEndpoint]
        var items: [JSONValue] = []
        for (i, color) in ["red", "Red", "green", "blue", "RED"].enumerated() {
            items.append(
                item(
                    "e\(i)", domain: "org.d\(i)",
                    [
                        "contentType": .string("Employee"), "favoriteColor": .string(color),
                        "rank": .number(Double(i)),
                        "location": .object(["latitude": .number(37.78 + Double(i)), "longitude": .number(-122.4)]),
                    ]))
        }
        _ = try await client.publish(items)

        let first = try CommandLineTests.limelight(
            [
                "predicate", "--record-type", "Employee", "--sort", "rank:desc", "--limit", "2",
                "--json", "--fetch", "rank", "--arg", "red", "favoriteColor == %@",
            ] + ep)
        #expect(first.status == 0)
        #expect(uids(first.stdout) == ["e4", "e1"])
        let lastLine = first.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(lastLine.hasPrefix("cursor "))
        let cursor = String(lastLine.dropFirst("cursor ".count))

        let second = try CommandLineTests.limelight(
            [
                "predicate", "--record-type", "Employee", "--sort", "rank:desc", "--limit", "2",
                "--json", "--cursor", cursor, "--arg", "red", "favoriteColor == %@",
            ] + ep)
        #expect(second.status == 0)
        #expect(uids(second.stdout) == ["e0"])
        #expect(!second.stderr.contains("cursor "))  // the last page

        // --arg reads JSON when it parses: a location, a number.
        let near = try CommandLineTests.limelight(
            [
                "predicate", "--record-type", "Employee", "--json",
                "--arg", #"{"latitude": 37.78, "longitude": -122.4}"#, "--arg", "150",
                "distanceToLocation:fromLocation:(location, %@) < %@",
            ] + ep)
        #expect(near.status == 0)
        #expect(Set(uids(near.stdout)) == ["e0", "e1"])

        let nsp = try CommandLineTests.limelight(
            [
                "predicate", "--record-type", "Employee", "--dialect", "nspredicate", "--json",
                "favoriteColor ENDSWITH 'een' OR rank == 3",
            ] + ep)
        #expect(Set(uids(nsp.stdout)) == ["e2", "e3"])

        let bad = try CommandLineTests.limelight(["predicate", "--record-type", "Employee", "favoriteColor LIKE 'r*'"] + ep)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("at 14: CloudKit queries have no LIKE; the nspredicate dialect has it"))
        #expect(bad.stdout.isEmpty)

        let wrongCursor = try CommandLineTests.limelight(["predicate", "--record-type", "Employee", "--cursor", cursor, "TRUEPREDICATE"] + ep)
        #expect(wrongCursor.status == 2)
        #expect(wrongCursor.stderr.contains("another query"))
    }

    /// A query or predicate that begins with `-` is the query, with or
    /// without `--`; a bad one, and arguments ArgumentParser rejects, exit 2
    /// naming the position, with or without a server.
    @Test func queriesBeginningWithADashAndBadArgumentsExitAsDocumented() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let ep = ["--endpoint", cluster.clientEndpoint]
        _ = try await client.publish([
            item("e1", domain: "org.a", ["contentType": .string("Employee"), "rank": .number(-3), "title": .string("-dash")]),
            item("e2", domain: "org.a", ["contentType": .string("Employee"), "rank": .number(4), "title": .string("plain")]),
        ])
        let predicate = ["predicate", "--record-type", "Employee", "--dialect", "nspredicate", "--json"]
        for args in [predicate + ep + ["--", "-1 < rank"], predicate + ["-1 < rank"] + ep, predicate + ep + ["-1 < rank"]] {
            let r = try CommandLineTests.limelight(args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(uids(r.stdout) == ["e2"], "\(args)")
        }
        for args in [["query", "--json"] + ep + ["--", "rank < -1"], ["query", "--json", "rank < -1"] + ep] {
            let r = try CommandLineTests.limelight(args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(uids(r.stdout) == ["e1"], "\(args)")
        }

        // Bad: the position and a caret, exit 2, no server needed.
        let nowhere = ["--endpoint", "tcp://127.0.0.1:9"]
        for (args, position) in [
            (["predicate", "--record-type", "E", "-1 < "] + nowhere, "at 5:"),
            (["predicate", "--record-type", "E"] + nowhere + ["--", "-rank BETWEEN"], "at 0:"),
            (["query", "-1 <"] + nowhere, "at 0:"),
            (["query"] + nowhere + ["--", "-"], "at 0:"),
        ] {
            let r = try CommandLineTests.limelight(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("bad query: \(position)"), "\(args): \(r.stderr)")
            #expect(r.stderr.contains("^"), "\(args): \(r.stderr)")
        }
        // Arguments ArgumentParser rejects: its message, exit 2 (not its 64).
        for (args, message) in [
            (["predicate", "rank < 1"], "--record-type"),
            (["predicate", "--record-type", "E", "--limit", "x", "rank < 1"], "--limit"),
            (["predicate", "--record-type", "E", "rank < 1", "rank > 2"], "rank > 2"),
            (["query", "--bogus", "title == 'x'"], "--bogus"),
            (["query"], "query"),
        ] {
            let r = try CommandLineTests.limelight(args + nowhere)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(args): \(r.stderr)")
        }
    }

    func uids(_ stdout: String) -> [String] {
        stdout.split(separator: "\n").compactMap { try? JSONValue.parse(String($0))["uniqueIdentifier"]?.stringValue }
    }
}
