/// The type of one attribute's values.
public enum ValueType: String, Sendable, Hashable, Codable, CaseIterable {
    case text
    case number
    case date
    case boolean
    case location
}

/// What Limelight knows of one attribute: the shape `CSCustomAttributeKey`
/// declares for custom attributes, and the table below gives for the
/// `CSSearchableItemAttributeSet` names.
public struct AttributeSpec: Sendable, Hashable, Codable {
    public var name: String
    public var type: ValueType
    /// A list of values (`keywords`, `authorNames`); a single value is accepted
    /// and stored as a list of one.
    public var multiValued: Bool
    /// Indexed for queries at all. A non-searchable attribute is stored and
    /// returned, but a query that names it is an error.
    public var searchable: Bool
    /// Included when a query names every attribute (`*` or `**`).
    public var searchableByDefault: Bool
    /// Values are identifiers rather than prose (`CSCustomAttributeKey`'s
    /// `unique`). Recorded and reported; it changes no query's answer: a
    /// comparison with `w` still matches an identifier's words, as it does in
    /// Core Spotlight, where the flag only lets the index save space.
    public var unique: Bool

    public init(
        name: String, type: ValueType, multiValued: Bool = false, searchable: Bool = true,
        searchableByDefault: Bool = true, unique: Bool = false
    ) {
        self.name = name
        self.type = type
        self.multiValued = multiValued
        self.searchable = searchable
        self.searchableByDefault = searchableByDefault
        self.unique = unique
    }
}

/// The attribute names and types of `CSSearchableItemAttributeSet`, in one table.
///
/// Names follow the Swift property names of the attribute set (`title`,
/// `contentDescription`, `completionDate`); a value of the wrong JSON type for
/// one of these is rejected. Any other name is a custom attribute.
public enum StandardAttributes {
    static let text: [String] = [
        // General
        "title", "displayName", "contentDescription", "contentType", "contentURL", "identifier",
        "kind", "version", "headline", "comment", "copyright", "information", "instructions",
        "textContent", "subject", "theme", "role", "rights", "creator", "url", "path",
        "ratingDescription", "containerTitle", "containerDisplayName", "containerIdentifier",
        "fileName", "uniformTypeIdentifier", "accountIdentifier", "actionIdentifier", "audience",
        "genre", "securityMethod", "HTMLContent", "mailboxIdentifier", "domainIdentifier",
        // Places
        "namedLocation", "thoroughfare", "subThoroughfare", "postalCode", "city",
        "stateOrProvince", "country", "fullyFormattedAddress", "GPSAreaInformation",
        "GPSMapDatum", "GPSMeasureMode", "GPSProcessingMethod", "GPSStatus", "GPSTrack",
        // Media
        "album", "artist", "composer", "lyricist", "musicalGenre", "keySignature",
        "timeSignature", "director", "producer", "colorSpace", "profileName", "acquisitionMake",
        "acquisitionModel", "cameraOwner", "lensModel", "exposureMode", "exposureProgram",
        "deliveryType", "encodingApplications", "generalMIDISequence", "musicalInstrumentCategory",
        "musicalInstrumentName", "originalFormat", "originalSource", "EXIFVersion", "EXIFGPSVersion",
        "contentSources",
    ]
    static let textLists: [String] = [
        "keywords", "authorNames", "authorEmailAddresses", "authorAddresses", "recipientNames",
        "recipientEmailAddresses", "recipientAddresses", "emailAddresses", "phoneNumbers",
        "instantMessageAddresses", "contributors", "coverage", "editors", "organizations",
        "participants", "projects", "publishers", "languages", "alternateNames", "contentTypeTree",
        "containerIdentifiers", "hiddenAdditionalRecipients", "emailHeaders", "layerNames",
        "performers", "codecs", "mediaTypes", "fonts", "pageNames", "accountHandles",
    ]
    static let numbers: [String] = [
        "latitude", "longitude", "altitude", "rankingHint", "rating", "duration", "pageCount",
        "pageWidth", "pageHeight", "pixelWidth", "pixelHeight", "pixelCount", "bitsPerSample",
        "audioBitRate", "videoBitRate", "speed", "course", "fNumber", "focalLength",
        "focalLength35mm", "ISOSpeed", "orientation", "resolutionWidthDPI", "resolutionHeightDPI",
        "tempo", "audioChannelCount", "audioSampleRate", "audioTrackNumber", "playCount",
        "containerOrder", "maxAperture", "exposureTime", "exposureTimeSeconds", "whiteBalance",
        "meteringMode", "imageDirection", "GPSDOP", "GPSDestBearing", "GPSDestDistance",
        "GPSDestLatitude", "GPSDestLongitude", "GPSDifferental", "horizontalAccuracy",
        "verticalAccuracy", "totalBitRate", "messageCount", "unreadCount", "fileSize",
    ]
    static let dates: [String] = [
        "contentCreationDate", "contentModificationDate", "metadataModificationDate",
        "completionDate", "dueDate", "startDate", "endDate", "lastUsedDate", "addedDate",
        "downloadedDate", "recordingDate", "timestamp", "GPSDateStamp", "contentRatingDate",
    ]
    static let dateLists: [String] = ["importantDates"]
    static let booleans: [String] = [
        "supportsNavigation", "supportsPhoneCall", "allDay", "hasAlphaChannel", "flashOn",
        "redEyeOn", "streamable", "local", "isUserCreated", "isUserOwned", "isUserCurated",
        "isLikelyJunk", "isPriority", "userCreated", "userOwned", "userCurated", "isFlagged",
        "isRead", "isSpam",
    ]
    static let locations: [String] = ["location"]

    /// Text attributes that hold sentences rather than categories: never
    /// counted as facets unless named (`facets: ["*"]` leaves them out).
    public static let prose: Set<String> = [
        "title", "displayName", "contentDescription", "textContent", "HTMLContent", "headline", "comment",
        "information", "instructions", "subject", "fullyFormattedAddress", "containerTitle", "containerDisplayName",
    ]

    /// Every standard attribute by name.
    public static let all: [String: AttributeSpec] = {
        var table: [String: AttributeSpec] = [:]
        func add(_ names: [String], _ type: ValueType, multi: Bool = false) {
            for n in names { table[n] = AttributeSpec(name: n, type: type, multiValued: multi) }
        }
        add(text, .text)
        add(textLists, .text, multi: true)
        add(numbers, .number)
        add(dates, .date)
        add(dateLists, .date, multi: true)
        add(booleans, .boolean)
        add(locations, .location)
        // Identifiers, not prose (see `AttributeSpec.unique`).
        for n in [
            "contentURL", "url", "path", "identifier", "containerIdentifier", "uniformTypeIdentifier",
            "accountIdentifier", "actionIdentifier", "domainIdentifier", "mailboxIdentifier",
        ] {
            table[n]?.unique = true
        }
        return table
    }()
}

/// The attribute specs in force: the standard table plus declared custom keys.
///
/// An attribute not found here is typed from its first JSON value, as Core
/// Spotlight does for an undeclared custom attribute; a date therefore needs a
/// declaration, since JSON has no date type.
public struct AttributeSchema: Sendable, Hashable {
    public private(set) var custom: [String: AttributeSpec]
    /// Attributes declared `semantic`, in the order they were first declared
    /// (see ``SemanticText``); standard attributes may be among them.
    public internal(set) var semantic: [String] = []

    public init(custom: [String: AttributeSpec] = [:], semantic: [String] = []) {
        self.custom = custom
        self.semantic = semantic
    }

    public func spec(for name: String) -> AttributeSpec? {
        StandardAttributes.all[name] ?? custom[name]
    }

    /// Declares a custom attribute (`CSCustomAttributeKey`). Redeclaring a
    /// standard attribute is refused: its type is fixed by Core Spotlight.
    public mutating func declare(_ spec: AttributeSpec) throws(ItemError) {
        guard AttributeName.isValid(spec.name) else {
            throw ItemError(.invalidAttributeName, "custom attribute name '\(spec.name)' is not a valid name", field: "name")
        }
        if StandardAttributes.all[spec.name] != nil {
            throw ItemError(.wrongType, "'\(spec.name)' is a standard attribute and cannot be redeclared", field: "name")
        }
        custom[spec.name] = spec
    }
}

/// Rules for attribute names.
public enum AttributeName {
    /// 1 to 128 characters: a letter or `_`, then letters, digits, `_`, `.` or `-`.
    public static func isValid(_ name: String) -> Bool {
        // The UTF-8 view walked in place: every attribute of every item published is checked.
        let u = name.utf8
        guard let first = u.first, u.count <= 128 else { return false }
        func letter(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95 }
        guard letter(first) else { return false }
        return u.dropFirst().allSatisfy { letter($0) || ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 45 }
    }
}
