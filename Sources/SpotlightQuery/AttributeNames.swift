/// Spotlight's `kMDItem…` attribute names, mapped onto the attribute-set
/// names that Limelight stores.
///
/// Queries written for `mdfind` and `NSMetadataQuery` name attributes by
/// their metadata keys (`kMDItemTextContent`), while Core Spotlight items
/// carry the `CSSearchableItemAttributeSet` property names (`textContent`).
/// Accepting both lets one query string work against either habit.
///
/// The rule: drop the `kMDItem` prefix and lowercase the first letter
/// (`kMDItemTitle` → `title`, `kMDItemDisplayName` → `displayName`), except
/// that a leading acronym is kept as it is (`kMDItemGPSStatus` → `GPSStatus`,
/// `kMDItemEXIFVersion` → `EXIFVersion`), as the attribute set spells it.
/// The few keys whose attribute-set name differs are in ``overrides``.
enum MetadataKeys {
    static let prefix = "kMDItem"

    /// Metadata keys whose `CSSearchableItemAttributeSet` name is not the
    /// key minus its prefix.
    static let overrides: [String: String] = [
        "Authors": "authorNames",
        "Recipients": "recipientNames",
        "Description": "contentDescription",
        "URL": "url",
        "FNumber": "fNumber",
        "FSName": "fileName",
        "FSSize": "fileSize",
        "FSCreationDate": "contentCreationDate",
        "FSContentChangeDate": "contentModificationDate",
        "AttributeChangeDate": "metadataModificationDate",
        "DateAdded": "addedDate",
        "DurationSeconds": "duration",
        "NumberOfPages": "pageCount",
        "WhereFroms": "contentSources",
    ]

    /// The attribute-set name for a name as written in a query.
    static func canonical(_ name: String) -> String {
        guard name.hasPrefix(prefix), name.count > prefix.count else { return name }
        let rest = String(name.dropFirst(prefix.count))
        if let mapped = overrides[rest] { return mapped }
        let chars = Array(rest)
        // Only a capitalised remainder is a metadata key (`kMDItemTitle`);
        // `kMDItemx` is some custom attribute and stays as written.
        guard chars[0].isUppercase else { return name }
        if chars.count > 1, chars[1].isUppercase { return rest }
        return chars[0].lowercased() + String(chars.dropFirst())
    }
}
