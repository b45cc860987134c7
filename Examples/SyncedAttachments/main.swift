import Foundation
import OpenSwiftData
import OpenSwiftDataSync

// A chat message with attachments, as a messaging app models it. Without an engine that syncs
// files, each attachment carries its own pipeline: `url` (where it was uploaded), `localURL`,
// `uploadStatus`, `uploadProgress`, `uploadError`, and an upload queue around them. Here the
// bytes are an `.externalStorage` property: kept in a file beside the store, synced as a blob
// that resumes where it stopped, and reported by the engine.

@Model
final class Message {
    var text: String
    var sentAt: Date
    @Relationship(deleteRule: .cascade, inverse: \Attachment.message) var attachments: [Attachment] = []

    init(text: String, sentAt: Date = Date()) {
        self.text = text
        self.sentAt = sentAt
    }
}

@Model
final class Attachment {
    var fileName: String
    var mimeType: String
    /// The bytes; `nil` on another device until they have arrived.
    @Attribute(.externalStorage) var data: Data?
    var message: Message?

    init(fileName: String, mimeType: String, data: Data) {
        self.fileName = fileName
        self.mimeType = mimeType
        self.data = data
    }
}

/// Prints a line at once, also into a file (`print` buffers it): progress shows as it happens.
func say(_ items: Any...) {
    FileHandle.standardOutput.write(Data((items.map { "\($0)" }.joined(separator: " ") + "\n").utf8))
}

/// Everything the app adds to sync messages and their attachments.
func startSync(_ container: ModelContainer, server: URL, user: String, token: String, onDemand: Bool) async throws -> SyncEngine {
    var configuration = SyncConfiguration()
    configuration.sync(Message.self)
    configuration.sync(Attachment.self)
    if onDemand {
        // The bytes only when the user opens an attachment; the record arrives either way.
        configuration.attachments(\Attachment.data, download: .onDemand)
    }
    let engine = try SyncEngine(container: container, server: server, user: user, configuration: configuration, tokenProvider: { token })
    Task {
        for await event in engine.events {
            switch event {
            case let .attachmentStarted(progress):
                say("attachment: \(progress.transfer.direction) of \(progress.transfer.digest) from byte \(progress.completed) of \(progress.transfer.size)")
            case let .attachmentTransferred(transfer):
                say("attachment: \(transfer.direction) of \(transfer.digest) done")
            case let .attachmentFailed(transfer, error):
                say("attachment: \(transfer.direction) of \(transfer.digest) failed: \(error)")
            default:
                say("sync:", event)
            }
        }
    }
    return engine
}

// The rest is the command line of this example, two devices of one user through
// `swift run osd-server` (see the sync guide):
//
//   swift run SyncedAttachments --server http://127.0.0.1:8080 --user alice --token T --store a.sqlite send "Our trip" --file trip.mov
//   swift run SyncedAttachments ... --store b.sqlite sync
//   swift run SyncedAttachments ... --store b.sqlite export trip.mov --to copy.mov
//
// Commands: `send TEXT --file PATH` (a message with the file attached), `list`, `sync` (records,
// then attachments, with progress), `open NAME` (downloads an attachment's bytes if they are not
// here), `export NAME --to PATH` (writes an attachment's bytes). With `--download on-demand`,
// attachments download only when opened.

var options: [String: String] = [:]
var words: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument.hasPrefix("--"), let value = arguments.popFirst() {
        options[String(argument.dropFirst(2))] = value
    } else {
        words.append(argument)
    }
}
guard let serverText = options["server"], let server = URL(string: serverText), let user = options["user"],
    let token = options["token"], let store = options["store"], let command = words.first
else {
    say(
        "usage: SyncedAttachments --server URL --user NAME --token JWT --store FILE [--download on-demand] (send TEXT --file PATH|list|sync|open NAME|export NAME --to PATH)"
    )
    exit(2)
}
let container = try ModelContainer(for: Message.self, Attachment.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: store)))
let engine = try await startSync(container, server: server, user: user, token: token, onDemand: options["download"] == "on-demand")
let context = ModelContext(container)

/// Shows the transfer under way while `body` runs.
func reportingProgress(_ body: () async throws -> Void) async throws {
    let status = engine.status
    let reporter = Task { @MainActor in
        var last = -1
        while !Task.isCancelled {
            if let progress = status.attachmentProgress, Int(progress.fraction * 10) != last {
                last = Int(progress.fraction * 10)
                say("progress: \(progress.transfer.direction) \(progress.completed) of \(progress.transfer.size) bytes")
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
    defer { reporter.cancel() }
    try await body()
}

switch command {
case "send":
    guard let file = options["file"] else {
        say("send needs --file PATH")
        exit(2)
    }
    let message = Message(text: words.dropFirst().joined(separator: " "))
    let name = URL(fileURLWithPath: file).lastPathComponent
    // Mapped, not read: a large file is not copied into memory.
    let attachment = Attachment(fileName: name, mimeType: "application/octet-stream", data: try Data(contentsOf: URL(fileURLWithPath: file), options: .alwaysMapped))
    message.attachments.append(attachment)
    context.insert(message)
    try context.save()
    say("saved:", name)
case "list":
    for message in try context.fetch(FetchDescriptor<Message>(sortBy: [SortDescriptor(\.sentAt)])) {
        let files = message.attachments.map { "\($0.fileName) (\($0.data.map { "\($0.count) bytes" } ?? "not here yet"))" }
        say("\(message.text): \(files.joined(separator: ", "))")
    }
case "open":
    let name = words.dropFirst().joined(separator: " ")
    guard let attachment = try context.fetch(FetchDescriptor<Attachment>(predicate: #Predicate { $0.fileName == name })).first else {
        say("no attachment named \(name)")
        exit(2)
    }
    if attachment.data == nil {
        try await engine.downloadAttachment(\Attachment.data, of: attachment.persistentModelID)
    }
    let opened = ModelContext(container).model(for: attachment.persistentModelID) as? Attachment
    say("opened: \(name), \(opened?.data?.count ?? 0) bytes")
case "export":
    let name = words.dropFirst().joined(separator: " ")
    guard let target = options["to"], let attachment = try context.fetch(FetchDescriptor<Attachment>(predicate: #Predicate { $0.fileName == name })).first else {
        say("export needs an attachment's name and --to PATH")
        exit(2)
    }
    guard let data = attachment.data else {
        say("absent: \(name) has not arrived yet")
        exit(1)
    }
    try data.write(to: URL(fileURLWithPath: target))
    say("exported: \(data.count) bytes")
default:
    break
}
if command == "sync" || command == "send" {
    do {
        try await engine.syncNow()
        say("synced; pending:", try await engine.pendingChangeCount())
        try await reportingProgress { try await engine.transferAttachments() }
        let status = engine.status
        let (uploads, missing) = await MainActor.run { (status.pendingAttachmentUploadCount, status.missingAttachmentCount) }
        say("attachments: \(uploads) to upload, \(missing) to download")
    } catch {
        say("sync failed:", error)
    }
}
