import Foundation
import OpenSwiftData
import OpenSwiftDataSyncProtocol
import Synchronization

/// What the attachment transfers remember between passes.
struct SyncAttachmentQueue {
    /// Wakes the transfer loop: after each sync cycle, and when a retry is due.
    var signal: AsyncStream<Void>.Continuation?
    /// Uploads the server refused for good in this run (over a limit): tried again on the next
    /// launch or ``SyncEngine/transferAttachments()``.
    var refused: Set<SyncAttachment> = []
    /// Passes in a row that left transfers to retry.
    var failures = 0
}

/// Attachments: the bytes of synced `.externalStorage` values, which travel apart from their
/// records as blobs (protocol version 4).
///
/// A save's record is pushed at once, with the blob's digest and size in the field. The bytes
/// follow: once a cycle has pushed and pulled, the engine uploads the files saves left pinned
/// (each resumed from what the server holds, streamed from the file), then downloads the blobs
/// that pulled records name and this device lacks. Until its bytes arrive, such a property reads
/// as absent (`nil`, or an empty `Data` when it is not optional). A blob the server does not
/// have yet (its writer has not finished uploading) is asked for again with backoff.
extension SyncEngine {
    /// Uploads every attachment waiting for it and downloads every missing one, now; throws the
    /// first failure. A blob the server does not hold yet is left for later, not an error.
    public func transferAttachments() async throws {
        guard !signedOut else { throw SyncEngineError.signedOut }
        attachments.refused = []
        if let error = await transferPass().error { throw error }
    }

    /// Starts the loop that transfers attachments after each cycle.
    func startAttachmentTransfers() {
        guard container.syncsAttachments, attachmentTask == nil else { return }
        let (signals, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        attachments.signal = continuation
        // Files saved before this launch may wait for their upload.
        continuation.yield()
        attachmentTask = Task { [weak self] in
            for await _ in signals {
                guard let self, !Task.isCancelled else { break }
                await self.runAttachmentPass()
            }
        }
    }

    /// One pass of the loop; schedules a retry with backoff while transfers are left.
    private func runAttachmentPass() async {
        let outcome = await transferPass()
        guard outcome.left else {
            attachments.failures = 0
            return
        }
        attachments.failures += 1
        let delay = configuration.backoff.delay(attempt: attachments.failures, using: &random)
        let clock = self.clock
        let signal = attachments.signal
        Task {
            do { try await clock.sleep(seconds: max(delay, 0.05)) } catch { return }
            signal?.yield()
        }
    }

    /// Uploads, then downloads. Returns the first failure and whether anything is left to retry.
    private func transferPass() async -> (error: SyncEngineError?, left: Bool) {
        guard container.syncsAttachments else { return (nil, false) }
        var firstError: SyncEngineError?
        var left = false
        do {
            for attachment in try container.pendingSyncAttachmentUploads() where !attachments.refused.contains(attachment) {
                do {
                    try await upload(attachment)
                } catch {
                    let failure = Self.engineError(error)
                    firstError = firstError ?? failure
                    if Self.isTransient(failure) {
                        left = true
                    } else {
                        attachments.refused.insert(attachment)
                    }
                    emit(.attachmentFailed(AttachmentTransfer(direction: .upload, attachment), failure))
                    if Self.isTransient(failure) { break }
                }
            }
            for attachment in try container.missingSyncAttachments() {
                do {
                    try await download(attachment)
                } catch let SyncTransportError.refused(status, _) where status == 404 {
                    // Not uploaded yet by its writer (or not readable here): asked again later.
                    left = true
                } catch {
                    let failure = Self.engineError(error)
                    firstError = firstError ?? failure
                    left = true
                    emit(.attachmentFailed(AttachmentTransfer(direction: .download, attachment), failure))
                    if Self.isTransient(failure) { break }
                }
            }
        } catch {
            let failure = Self.engineError(error)
            firstError = firstError ?? failure
            left = true
        }
        await updateAttachmentStatus(progress: nil)
        return (firstError, left)
    }

    /// Uploads one pinned file, resumed from what the server holds, and unpins it.
    private func upload(_ attachment: SyncAttachment) async throws {
        guard let blob = BlobReference(digest: attachment.digest, size: attachment.size) else { return }
        guard let file = container.syncAttachmentFile(attachment) else {
            // No file to send (removed by hand): nothing can be uploaded any more.
            try container.syncAttachmentUploaded(attachment)
            return
        }
        var state = try await transport.blobUploadState(blob)
        if !state.isComplete {
            let transfer = AttachmentTransfer(direction: .upload, attachment)
            await updateAttachmentStatus(progress: AttachmentProgress(transfer: transfer, completed: state.received))
            let reporter = progressReporter(for: transfer)
            state = try await transport.uploadBlob(blob, from: file, offset: state.received, progress: reporter)
        }
        guard state.isComplete else {
            throw SyncEngineError.transport(.unreachable("the server holds \(state.received) of the \(blob.size) bytes of \(blob) after the upload"))
        }
        try container.syncAttachmentUploaded(attachment)
        emit(.attachmentTransferred(AttachmentTransfer(direction: .upload, attachment)))
    }

    /// Downloads one missing blob and hands it to the store, which checks it.
    private func download(_ attachment: SyncAttachment) async throws {
        guard let blob = BlobReference(digest: attachment.digest, size: attachment.size) else { return }
        let transfer = AttachmentTransfer(direction: .download, attachment)
        let path = try container.syncAttachmentDownloadPath()
        await updateAttachmentStatus(progress: AttachmentProgress(transfer: transfer, completed: 0))
        do {
            try await transport.downloadBlob(blob, to: path, progress: progressReporter(for: transfer))
            try container.syncAttachmentArrived(attachment, file: path)
        } catch let mismatch as SyncAttachmentMismatch {
            throw SyncEngineError.badServerAnswer("\(mismatch)")
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        emit(.attachmentTransferred(transfer))
    }

    /// A closure that shows a transfer's progress in the status, at most once per percent.
    private func progressReporter(for transfer: AttachmentTransfer) -> @Sendable (Int64) -> Void {
        let status = self.status
        let step = max(transfer.size / 100, 1)
        let last = LastReported()
        return { completed in
            guard last.advance(to: completed / step) || completed == transfer.size else { return }
            Task { @MainActor in
                if status.attachmentProgress?.transfer == transfer, status.attachmentProgress?.completed ?? 0 > completed { return }
                status.attachmentProgress = AttachmentProgress(transfer: transfer, completed: completed)
            }
        }
    }

    /// Shows the queues' lengths, and the transfer under way (nil: none).
    private func updateAttachmentStatus(progress: AttachmentProgress?) async {
        let uploads = (try? container.pendingSyncAttachmentUploads().count) ?? 0
        let missing = (try? container.missingSyncAttachments().count) ?? 0
        let status = self.status
        await MainActor.run {
            status.pendingAttachmentUploadCount = uploads
            status.missingAttachmentCount = missing
            status.attachmentProgress = progress
        }
    }
}

/// The last step a progress closure reported; a closure may be called from any thread.
private final class LastReported: Sendable {
    private let value = Mutex<Int64>(-1)

    /// Moves to `step`; true when it is a new one.
    func advance(to step: Int64) -> Bool {
        value.withLock { last in
            guard step > last else { return false }
            last = step
            return true
        }
    }
}
