import Crypto
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
    /// Passes in a row whose transfers failed.
    var failures = 0
    /// When the retry the loop waits for is due: one waits at a time, and a pass that needs an
    /// earlier one schedules it.
    var retryAt: Date?
    /// Whether a transfer runs: passes and on-demand downloads take turns, so that no two
    /// requests write the same download's file or send the same upload at once.
    var busy = false
    var waiters: [CheckedContinuation<Void, Never>] = []
    /// Blobs the server does not have yet (their writer has not uploaded them), by digest: how
    /// many times in a row it said so, and when to ask again. The loop's passes skip a blob until
    /// then, so that one whose writer never uploads costs a request per backoff, not one per sync.
    var notUploadedYet: [String: (answers: Int, due: Date)] = [:]
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
    ///
    /// A started engine transfers after each cycle on its own; this asks again at once for the
    /// blobs its passes wait to ask for (the server did not have them yet).
    public func transferAttachments() async throws {
        guard !signedOut else { throw SyncEngineError.signedOut }
        attachments.refused = []
        if let error = await transferPass(askingEveryBlob: true).error { throw error }
    }

    /// Downloads the bytes of a model's synced `.externalStorage` property now, if they are not
    /// here: for a property downloaded on demand, or to fetch an eager one at once.
    ///
    /// ```swift
    /// if photo.original == nil {
    ///     try await engine.downloadAttachment(\Photo.original, of: photo.persistentModelID)
    /// }
    /// ```
    ///
    /// Throws ``SyncEngineError/attachmentUnavailable(_:)`` when they cannot be had now: the
    /// server cannot be reached (offline), or does not have them yet (their writer has not
    /// finished uploading). Contexts see the bytes arrive as a save of the engine's.
    public func downloadAttachment<T: PersistentModel, V>(_ keyPath: KeyPath<T, V> & Sendable, of model: PersistentIdentifier) async throws {
        guard !signedOut else { throw SyncEngineError.signedOut }
        let property = try Self.attachmentProperty(keyPath)
        let found: (attachment: SyncAttachment, isLocal: Bool)?
        do {
            found = try container.syncAttachment(of: model, property: property)
        } catch {
            throw Self.engineError(error)
        }
        guard let (attachment, isLocal) = found, !isLocal else { return }
        do {
            try await oneTransferAtATime {
                // Another transfer may have brought the bytes meanwhile.
                guard try container.syncAttachment(of: model, property: property)?.isLocal == false else { return }
                try await download(attachment)
            }
            await updateAttachmentStatus(progress: nil)
        } catch {
            await updateAttachmentStatus(progress: nil)
            let failure = Self.engineError(error)
            let reason: String
            switch failure {
            case let .transport(.refused(status, _)) where status == 404:
                reason = "the server does not have them yet (their upload has not finished)"
            case let .transport(.unreachable(detail)):
                reason = "the server cannot be reached (\(detail))"
            default:
                reason = failure.description
            }
            throw SyncEngineError.attachmentUnavailable(
                "the bytes of \(model.entityName).\(property) (\(attachment)) cannot be downloaded: \(reason)")
        }
    }

    /// Drops this device's copy of the bytes of a model's synced `.externalStorage` property, to
    /// free space: the property reads as absent until ``downloadAttachment(_:of:)`` brings them
    /// back (an eager property's are downloaded again by the next sync).
    ///
    /// The server is asked first: the bytes are dropped only when it answers that it holds them
    /// for this user. Returns false, keeping them, when it does not (their upload has not
    /// finished, or it lost them) or the property holds its bytes in the record; throws when the
    /// server cannot be asked.
    @discardableResult
    public func evictAttachment<T: PersistentModel, V>(_ keyPath: KeyPath<T, V> & Sendable, of model: PersistentIdentifier) async throws -> Bool {
        let property = try Self.attachmentProperty(keyPath)
        do {
            guard let (attachment, isLocal) = try container.syncAttachment(of: model, property: property), isLocal,
                let blob = BlobReference(digest: attachment.digest, size: attachment.size)
            else { return false }
            let state = try Self.checked(try await transport.blobUploadState(blob), for: blob)
            guard state.isComplete else { return false }
            return try container.evictSyncAttachment(of: model, property: property)
        } catch {
            throw Self.engineError(error)
        }
    }

    /// `state` when it is an answer about `blob` (its digest and size, `received` within them);
    /// else the server's answer is not one the engine can use.
    static func checked(_ state: BlobUploadState, for blob: BlobReference) throws -> BlobUploadState {
        guard state.digest == blob.digest, state.size == blob.size, (0...blob.size).contains(state.received) else {
            throw SyncEngineError.badServerAnswer(
                "the server answered about the upload of \(blob) with \(state.digest):\(state.size), \(state.received) bytes received")
        }
        return state
    }

    /// The name of the property `keyPath` names.
    private static func attachmentProperty<T: PersistentModel, V>(_ keyPath: KeyPath<T, V>) throws -> String {
        guard let name = T.schemaMetadata.first(where: { $0.keypath == keyPath })?.name else {
            throw SyncEngineError.attachmentUnavailable("\(keyPath) names no persisted property of \(T.self)")
        }
        return name
    }

    /// After the server lost history (restored from a backup, or its log compacted past the
    /// cursor), offers it every attachment this device holds again: a restore may have lost blobs
    /// uploaded since the backup, which only their uploaders have. One request settles each blob
    /// the server still holds.
    func offerAttachmentsAgain() throws {
        guard container.syncsAttachments else { return }
        do {
            try container.repinSyncAttachments()
        } catch {
            throw Self.engineError(error)
        }
        attachments.refused = []
    }

    /// Runs `body` when no other transfer runs (see ``SyncAttachmentQueue/busy``).
    private func oneTransferAtATime<T>(_ body: () async throws -> T) async rethrows -> T {
        while attachments.busy { await withCheckedContinuation { attachments.waiters.append($0) } }
        attachments.busy = true
        defer {
            attachments.busy = false
            if !attachments.waiters.isEmpty { attachments.waiters.removeFirst().resume() }
        }
        return try await body()
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

    /// One pass of the loop; schedules a retry: with backoff after failed transfers, else when
    /// the first blob the server did not have yet is due to be asked for again.
    private func runAttachmentPass() async {
        let outcome = await transferPass(askingEveryBlob: false)
        let delay: Double
        if outcome.left {
            attachments.failures += 1
            delay = max(configuration.backoff.delay(attempt: attachments.failures, using: &random), 0.05)
        } else {
            attachments.failures = 0
            guard let due = outcome.due else { return }
            delay = max(due.timeIntervalSince(clock.now()), 0.05)
        }
        let target = clock.now().addingTimeInterval(delay)
        if let pending = attachments.retryAt, pending <= target { return }
        attachments.retryAt = target
        let clock = self.clock
        Task { [weak self] in
            try? await clock.sleep(seconds: delay)
            await self?.retryDue(target)
        }
    }

    /// A retry's time has come: the loop runs a pass.
    private func retryDue(_ target: Date) {
        if attachments.retryAt == target { attachments.retryAt = nil }
        attachments.signal?.yield()
    }

    /// Uploads, then downloads. Returns the first failure, whether failed transfers are left to
    /// retry, and when the first blob the server did not have yet is due to be asked for again.
    /// Such blobs are asked for once their backoff has passed, or at once when `askingEveryBlob`.
    private func transferPass(askingEveryBlob: Bool) async -> (error: SyncEngineError?, left: Bool, due: Date?) {
        guard container.syncsAttachments else { return (nil, false, nil) }
        return await oneTransferAtATime { await transferPassAlone(askingEveryBlob: askingEveryBlob) }
    }

    /// A pass, while no other transfer runs.
    private func transferPassAlone(askingEveryBlob: Bool) async -> (error: SyncEngineError?, left: Bool, due: Date?) {
        var firstError: SyncEngineError?
        var left = false
        var due: Date?
        do {
            // Files kept for mutations the engine no longer keeps go.
            let retained = try container.retainedSyncAttachments()
            if !retained.isEmpty {
                let named = try storeRead { db in try SyncEngineStore.blobsSentMutationsName(in: db) }
                for attachment in retained where !named.contains(attachment.digest) {
                    try container.releaseRetainedSyncAttachment(attachment)
                }
            }
            // The queues are counted before their transfers and at the end of the pass; each
            // transfer between takes one off its count, so that a pass of many transfers does
            // not read every row again for each.
            let pending = try container.pendingSyncAttachmentUploads()
            await showAttachmentCount(uploads: pending.count)
            for attachment in pending where !attachments.refused.contains(attachment) {
                do {
                    try await upload(attachment)
                    await countTransferred(.upload)
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
            // Read after the uploads, which may take long: what syncs meanwhile counts.
            let (missing, anyMissing) = try container.missingSyncAttachments(splitting: configuration.onDemandAttachments)
            // Downloads left by an earlier launch whose bytes no row waits for any more go.
            container.discardSyncAttachmentDownloads(keeping: anyMissing)
            await showAttachmentCount(missing: missing.count)
            // Answers about blobs no row waits for any more are forgotten.
            let waiting = Set(anyMissing.map(\.digest))
            attachments.notUploadedYet = attachments.notUploadedYet.filter { waiting.contains($0.key) }
            let now = clock.now()
            for attachment in missing {
                if !askingEveryBlob, let wait = attachments.notUploadedYet[attachment.digest], wait.due > now {
                    due = min(due ?? wait.due, wait.due)
                    continue
                }
                do {
                    try await download(attachment)
                    attachments.notUploadedYet[attachment.digest] = nil
                    await countTransferred(.download)
                } catch let SyncTransportError.refused(status, _) where status == 404 {
                    // Not uploaded yet by its writer (or not readable here): asked again after a
                    // backoff of its own (the policy's ceiling for that many answers: 0.5 s, 1 s,
                    // 2 s… up to a minute by default).
                    let answers = (attachments.notUploadedYet[attachment.digest]?.answers ?? 0) + 1
                    let next = clock.now().addingTimeInterval(configuration.backoff.ceiling(attempt: answers))
                    attachments.notUploadedYet[attachment.digest] = (answers, next)
                    due = min(due ?? next, next)
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
        return (firstError, left, due)
    }

    /// Uploads one pinned file, resumed from what the server holds, and unpins it.
    private func upload(_ attachment: SyncAttachment) async throws {
        guard let blob = BlobReference(digest: attachment.digest, size: attachment.size) else { return }
        guard let file = container.syncAttachmentFile(attachment) else {
            // No file to send (removed by hand): nothing can be uploaded any more.
            try container.syncAttachmentUploaded(attachment)
            return
        }
        var state = try Self.checked(try await transport.blobUploadState(blob), for: blob)
        // A part that started elsewhere than the server's offset (another upload of the same
        // bytes moved it): asked again, and sent from there, once.
        for attempt in 0..<2 where !state.isComplete {
            let transfer = AttachmentTransfer(direction: .upload, attachment)
            let started = AttachmentProgress(transfer: transfer, completed: state.received)
            emit(.attachmentStarted(started))
            await showAttachmentProgress(started)
            let reporter = progressReporter(for: transfer)
            do {
                state = try Self.checked(try await transport.uploadBlob(blob, from: file, offset: state.received, progress: reporter), for: blob)
            } catch let SyncTransportError.refused(_, error) where error.code == .uploadOffsetMismatch && attempt == 0 {
                state = try Self.checked(try await transport.blobUploadState(blob), for: blob)
            }
        }
        guard state.isComplete else {
            throw SyncEngineError.transport(.unreachable("the server holds \(state.received) of the \(blob.size) bytes of \(blob) after the upload"))
        }
        // Kept while a mutation the engine may send again after a server restore names it.
        let retained = try storeRead { db in try SyncEngineStore.sentMutationsName(blob: attachment.digest, in: db) }
        try container.syncAttachmentUploaded(attachment, retained: retained)
        emit(.attachmentTransferred(AttachmentTransfer(direction: .upload, attachment)))
    }

    /// Downloads one missing blob and hands it to the store, which checks it.
    private func download(_ attachment: SyncAttachment) async throws {
        guard let blob = BlobReference(digest: attachment.digest, size: attachment.size) else { return }
        let transfer = AttachmentTransfer(direction: .download, attachment)
        // The same path for every attempt: an interrupted download continues where it stopped.
        let path = try container.syncAttachmentDownloadPath(for: attachment)
        let held = ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.int64Value ?? 0
        let started = AttachmentProgress(transfer: transfer, completed: held < blob.size ? held : 0)
        emit(.attachmentStarted(started))
        await showAttachmentProgress(started)
        do {
            try await transport.downloadBlob(blob, to: path, progress: progressReporter(for: transfer))
        } catch let SyncTransportError.refused(status, error) {
            // Nothing of the blob to keep.
            try? FileManager.default.removeItem(atPath: path)
            throw SyncTransportError.refused(status: status, error: error)
        }
        do {
            try container.syncAttachmentArrived(attachment, file: path, found: try Self.sha256(ofFile: path))
        } catch let mismatch as SyncAttachmentMismatch {
            throw SyncEngineError.badServerAnswer("\(mismatch)")
        }
        emit(.attachmentTransferred(transfer))
    }

    /// The SHA-256 (lowercase hexadecimal) and size of a file, read in parts.
    static func sha256(ofFile path: String) throws -> (digest: String, size: Int64) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SyncEngineError.store("the downloaded file \(path) cannot be read")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while let part = try handle.read(upToCount: 1 << 20), !part.isEmpty {
            hasher.update(data: part)
            size += Int64(part.count)
        }
        return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), size)
    }

    /// A closure that shows a transfer's progress in the status, at most once per percent.
    private func progressReporter(for transfer: AttachmentTransfer) -> @Sendable (Int64) -> Void {
        let status = self.status
        let step = max(transfer.size / 100, 1)
        let last = LastReported()
        return { completed in
            guard last.advance(to: completed / step) || completed == transfer.size else { return }
            Task { @MainActor in
                // Only while the transfer is the one shown: a late update after it ended (the
                // status cleared, or another transfer shown) is dropped.
                guard let shown = status.attachmentProgress, shown.transfer == transfer, shown.completed < completed else { return }
                status.attachmentProgress = AttachmentProgress(transfer: transfer, completed: completed)
            }
        }
    }

    /// Shows the transfer under way, the queues' lengths as they were.
    private func showAttachmentProgress(_ progress: AttachmentProgress) async {
        let status = self.status
        await MainActor.run { status.attachmentProgress = progress }
    }

    /// Shows one queue's length, read just before its transfers.
    private func showAttachmentCount(uploads: Int? = nil, missing: Int? = nil) async {
        let status = self.status
        await MainActor.run {
            if let uploads { status.pendingAttachmentUploadCount = uploads }
            if let missing { status.missingAttachmentCount = missing }
        }
    }

    /// Takes a transferred attachment off its queue's length in the status.
    private func countTransferred(_ direction: AttachmentTransfer.Direction) async {
        let status = self.status
        await MainActor.run {
            switch direction {
            case .upload: status.pendingAttachmentUploadCount = max(0, status.pendingAttachmentUploadCount - 1)
            case .download: status.missingAttachmentCount = max(0, status.missingAttachmentCount - 1)
            }
        }
    }

    /// Counts the queues' lengths and shows them, and the transfer under way (nil: none).
    private func updateAttachmentStatus(progress: AttachmentProgress?) async {
        let uploads = (try? container.pendingSyncAttachmentUploads().count) ?? 0
        let missing = (try? container.missingSyncAttachments(excluding: configuration.onDemandAttachments).count) ?? 0
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
