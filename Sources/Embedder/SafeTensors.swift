import Foundation

/// The tensors of a `.safetensors` file: an 8-byte little-endian header length,
/// a JSON header mapping names to dtype, shape and byte range, then the raw data.
///
/// The file is memory-mapped and each tensor copied out into a `[Float]` only when
/// asked for, so weights the network does not use (the pooler, `position_ids`) cost
/// nothing, and the arrays the network keeps are ordinary Swift values with no
/// lifetime tied to the mapping.
struct SafeTensors {
    struct Entry {
        var dtype: String
        var shape: [Int]
        var start: Int
        var end: Int
    }

    let path: String
    let entries: [String: Entry]
    private let data: Data
    private let dataStart: Int

    init(path: String) throws {
        self.path = path
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else {
            throw EmbedderError(.missingFile, "cannot read the model weights", path: path)
        }
        self.data = data
        guard data.count >= 8 else {
            throw EmbedderError(.invalidSafetensors, "file is \(data.count) bytes, shorter than a safetensors header", path: path)
        }
        var headerLength: UInt64 = 0
        for i in 0..<8 { headerLength |= UInt64(data[i]) << (8 * UInt64(i)) }
        guard headerLength <= UInt64(data.count - 8) else {
            throw EmbedderError(.invalidSafetensors, "header length \(headerLength) runs past the end of the file", path: path)
        }
        dataStart = 8 + Int(headerLength)
        let header = data.subdata(in: 8..<dataStart)
        guard let object = try? JSONSerialization.jsonObject(with: header) as? [String: Any] else {
            throw EmbedderError(.invalidSafetensors, "the header is not a JSON object", path: path)
        }
        var entries: [String: Entry] = [:]
        for (name, value) in object where name != "__metadata__" {
            guard let info = value as? [String: Any], let dtype = info["dtype"] as? String,
                let shape = info["shape"] as? [Int], let offsets = info["data_offsets"] as? [Int],
                offsets.count == 2, offsets[0] >= 0, offsets[0] <= offsets[1],
                offsets[1] <= data.count - dataStart
            else {
                throw EmbedderError(.invalidSafetensors, "tensor \(name): malformed header entry", path: path)
            }
            entries[name] = Entry(dtype: dtype, shape: shape, start: offsets[0], end: offsets[1])
        }
        self.entries = entries
    }

    /// The float32 tensor `name`, which must have `shape`, in row-major order.
    func floats(_ name: String, shape: [Int]) throws -> [Float] {
        guard let e = entries[name] else {
            throw EmbedderError(.badTensor, "tensor \(name) is missing", path: path)
        }
        guard e.dtype == "F32", e.shape == shape else {
            throw EmbedderError(.badTensor, "tensor \(name) is \(e.dtype) \(e.shape); expected F32 \(shape)", path: path)
        }
        let count = shape.reduce(1, *)
        guard e.end - e.start == count * 4 else {
            throw EmbedderError(.badTensor, "tensor \(name) holds \(e.end - e.start) bytes; expected \(count * 4)", path: path)
        }
        // safetensors data is little-endian, as are all platforms Swift runs on
        // Linux; copying bytes (not loading Floats) also avoids any alignment demand.
        return [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            data.withUnsafeBytes { raw in
                UnsafeMutableRawBufferPointer(buffer).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: raw[(dataStart + e.start)..<(dataStart + e.end)]))
            }
            initialized = count
        }
    }
}
