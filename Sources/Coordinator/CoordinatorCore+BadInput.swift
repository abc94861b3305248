import Foundation
import WireProtocol

extension CoordinatorCore {
    /// A worker's message of several frames: answered with an error naming the
    /// fault (no id can be trusted, so the reply's id is empty), and forgotten.
    func rejectMultiFrame(route: [Data], frames: Int) {
        logger.notice("rejected a worker message of several frames", metadata: ["message.frames": "\(frames)"])
        sendError(
            .worker(route), "",
            WireError(
                code: "invalid_message",
                message: "a worker message is one frame of JSON; this one had \(frames) frames"))
    }
}
