import Foundation
import Observation

/// What an app shows about sync, observable from SwiftUI or `withObservationTracking`.
/// Updated by the engine on the main actor.
@MainActor
@Observable
public final class SyncStatus {
    /// Whether the last request reached the server.
    public internal(set) var isOnline = false
    /// Whether the live channel is connected (the server announces news; no polling needed).
    public internal(set) var isLiveConnected = false
    /// Whether a push or pull is in progress.
    public internal(set) var isSyncing = false
    /// Local saves not yet settled with the server.
    public internal(set) var pendingChangeCount = 0
    /// When the engine last completed a full sync (pushed and pulled to the end).
    public internal(set) var lastSyncDate: Date?
    /// Local saves kept on the device because the server cannot take them for one of its limits
    /// (see ``SyncEvent/held(_:)``): included in ``pendingChangeCount``, sent again on the next
    /// launch or ``SyncEngine/retryHeldSaves()``.
    public internal(set) var heldSaveCount = 0
    /// Attachments saved on this device whose bytes the server does not hold yet (their files
    /// are kept until it does).
    public internal(set) var pendingAttachmentUploadCount = 0
    /// Attachments of synced records whose bytes have not arrived on this device: their
    /// properties read as absent (`nil`, or an empty `Data` when not optional) until they do.
    public internal(set) var missingAttachmentCount = 0
    /// The attachment transfer under way, and how far it has come (nil: none).
    public internal(set) var attachmentProgress: AttachmentProgress?
    /// The last error, cleared by the next successful sync.
    public internal(set) var lastError: SyncEngineError?

    nonisolated init() {}
}
