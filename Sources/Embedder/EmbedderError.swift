/// Why a model could not be loaded.
///
/// A struct with a nested `Code` rather than an enum, as `ItemError` is, so new
/// reasons can be added without breaking callers that switch over them. Embedding
/// itself never fails: any text, even empty or malformed, has a vector.
package struct EmbedderError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        package var description: String { raw }

        /// Neither `--model DIR` nor `$LIMELIGHT_MODEL` named a folder.
        package static let noModel = Code("no_model")
        /// A file the model needs is absent or unreadable.
        package static let missingFile = Code("missing_file")
        /// `model.safetensors` is not a valid safetensors file.
        package static let invalidSafetensors = Code("invalid_safetensors")
        /// A weight the network needs is absent, or has another shape or type.
        package static let badTensor = Code("bad_tensor")
        /// `config.json` is unreadable or describes a network this code does not run.
        package static let unsupportedConfig = Code("unsupported_config")
        /// `vocab.txt` lacks the special tokens.
        package static let invalidVocabulary = Code("invalid_vocabulary")
    }

    package var code: Code
    /// A human sentence naming what was wrong.
    package var message: String
    /// The file the problem was found in, if any.
    package var path: String?

    package init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    package var description: String {
        if let path { return "\(path): \(message)" }
        return message
    }
}
