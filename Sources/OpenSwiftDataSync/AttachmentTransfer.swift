import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol

/// One attachment's bytes on their way: up to the server, or down to this device.
///
/// An attachment is the value of a synced `@Attribute(.externalStorage)` property larger than
/// 128 KiB, which travels apart from its record as a blob.
public struct AttachmentTransfer: Sendable, Hashable {
    /// Which way the bytes go.
    public enum Direction: Sendable, Hashable {
        /// From this device to the server.
        case upload
        /// From the server to this device.
        case download
    }

    /// Which way the bytes go.
    public var direction: Direction
    /// The SHA-256 of the bytes, in lowercase hexadecimal.
    public var digest: String
    /// Their size in bytes.
    public var size: Int64

    /// A transfer of the blob `digest` of `size` bytes.
    public init(direction: Direction, digest: String, size: Int64) {
        self.direction = direction
        self.digest = digest
        self.size = size
    }

    init(direction: Direction, _ attachment: SyncAttachment) {
        self.init(direction: direction, digest: attachment.digest, size: attachment.size)
    }
}

/// How far the transfer under way has come.
public struct AttachmentProgress: Sendable, Hashable {
    /// The transfer.
    public var transfer: AttachmentTransfer
    /// The bytes sent or received so far (with what the server or the file held before).
    public var completed: Int64

    /// The part done, from 0 to 1.
    public var fraction: Double { transfer.size == 0 ? 1 : Double(completed) / Double(transfer.size) }

    /// The progress of `transfer`, `completed` bytes of it done.
    public init(transfer: AttachmentTransfer, completed: Int64) {
        self.transfer = transfer
        self.completed = completed
    }
}
