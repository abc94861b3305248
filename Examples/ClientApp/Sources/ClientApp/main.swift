import LimelightClient

// Publishes an item and finds it again with a parameter search, on the
// cluster that `limelight up` started in this folder (the endpoint and key
// are found as the `limelight` command finds them).
let client = try LimelightClient.configured()
defer { client.close() }
let kiwi: JSONValue = .object([
    "uniqueIdentifier": .string("produce:kiwi"),
    "attributes": .object(["title": .string("Kiwi"), "price": .number(0.69)]),
])
let outcome = try await client.publishUntilAcknowledged([kiwi])
print("stored \(outcome.stored)")
var params = SearchParams(query: "kiwi")
params.hitsPerPage = 5
let result = try await client.search(params.build())
for case let hit in result.response["hits"]?.arrayValue ?? [] {
    print(hit["objectID"]?.stringValue ?? "?")
}
