// Items are JSON: every module that reads or writes items speaks `JSONValue`,
// so the JSON module comes with this one.
@_exported import JSON
