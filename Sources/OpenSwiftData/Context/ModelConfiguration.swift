import Foundation

/// Where and how a container stores its data.
///
/// ```swift
/// ModelConfiguration(isStoredInMemoryOnly: true)                 // tests
/// ModelConfiguration(url: URL(filePath: "/var/lib/app/app.store"))
/// ModelConfiguration("Cache", schema: Schema([Item.self]))       // <data dir>/Cache.store
/// ```
///
/// Without a URL the store is the file `<name>.store` (name `default` unless given) in
/// `$XDG_DATA_HOME/<executable name>/`, or `~/.local/share/<executable name>/` when
/// `XDG_DATA_HOME` is not set; the directory is created when the store is first opened.
public struct ModelConfiguration: Identifiable, Hashable, Sendable, CustomDebugStringConvertible {
    /// App group containers on Apple's systems; recorded, no effect here.
    public struct GroupContainer: Hashable, Sendable {
        let value: String?
        /// The app's default group container.
        public static var automatic: GroupContainer { GroupContainer(value: "automatic") }
        /// No group container.
        public static var none: GroupContainer { GroupContainer(value: nil) }
        /// A named group container.
        public static func identifier(_ groupName: String) -> GroupContainer { GroupContainer(value: groupName) }
    }

    /// CloudKit databases on Apple's systems; recorded, no effect here.
    public struct CloudKitDatabase: Hashable, Sendable {
        let value: String?
        /// The app's default CloudKit database.
        public static var automatic: CloudKitDatabase { CloudKitDatabase(value: "automatic") }
        /// No CloudKit database.
        public static var none: CloudKitDatabase { CloudKitDatabase(value: nil) }
        /// A named private CloudKit database.
        public static func `private`(_ privateDBName: String) -> CloudKitDatabase { CloudKitDatabase(value: privateDBName) }
    }

    /// The store's name.
    public let name: String
    /// The entities this configuration stores, or nil for all of the container's.
    public var schema: Schema?
    /// The store file's location (`/dev/null` for in-memory stores).
    public let url: URL
    /// Whether the store lives in memory only; nothing touches the disk.
    public let isStoredInMemoryOnly: Bool
    /// Whether contexts may save; when false, `save()` throws and the file is never modified.
    public let allowsSave: Bool
    /// How the store is migrated when the schema changed: backup and progress reporting.
    public var migrationOptions = MigrationOptions()
    /// The group container (no effect on Linux).
    public let groupContainer: GroupContainer
    /// The CloudKit database (no effect on Linux).
    public let cloudKitDatabase: CloudKitDatabase
    /// The group container's identifier, if one was named.
    public var groupAppContainerIdentifier: String? { groupContainer == .automatic ? nil : groupContainer.value }
    /// The CloudKit container's identifier, if one was named.
    public var cloudKitContainerIdentifier: String? { cloudKitDatabase == .automatic ? nil : cloudKitDatabase.value }

    /// The store's URL.
    public var id: URL { url }

    /// A configuration for the default store, or an in-memory one.
    public init(isStoredInMemoryOnly: Bool = false) {
        self.init(nil, schema: nil, isStoredInMemoryOnly: isStoredInMemoryOnly)
    }

    /// A configuration that stores the given model types.
    public init(for forTypes: any PersistentModel.Type..., isStoredInMemoryOnly: Bool = false) {
        self.init(nil, schema: Schema(forTypes), isStoredInMemoryOnly: isStoredInMemoryOnly)
    }

    /// A configuration with a name, stored in the default directory or in memory.
    public init(
        _ name: String? = nil, schema: Schema? = nil, isStoredInMemoryOnly: Bool = false, allowsSave: Bool = true,
        groupContainer: GroupContainer = .automatic, cloudKitDatabase: CloudKitDatabase = .automatic
    ) {
        let name = name ?? "default"
        self.name = name
        self.schema = schema
        self.isStoredInMemoryOnly = isStoredInMemoryOnly
        self.allowsSave = allowsSave
        self.groupContainer = groupContainer
        self.cloudKitDatabase = cloudKitDatabase
        self.url = isStoredInMemoryOnly ? URL(fileURLWithPath: "/dev/null") : Self.defaultDirectory().appendingPathComponent("\(name).store")
    }

    /// A configuration whose store is the file at `url`.
    public init(_ name: String? = nil, schema: Schema? = nil, url: URL, allowsSave: Bool = true, cloudKitDatabase: CloudKitDatabase = .automatic) {
        self.name = name ?? url.deletingPathExtension().lastPathComponent
        self.schema = schema
        self.url = url
        self.isStoredInMemoryOnly = url.path == "/dev/null"
        self.allowsSave = allowsSave
        self.groupContainer = .automatic
        self.cloudKitDatabase = cloudKitDatabase
    }

    /// The directory of stores configured without a URL.
    public static func defaultDirectory() -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share", isDirectory: true)
        }
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "OpenSwiftData").lastPathComponent
        return base.appendingPathComponent(executable.isEmpty ? "OpenSwiftData" : executable, isDirectory: true)
    }

    /// Checks the file name: not too long, and free of characters a file name cannot hold.
    func validate() throws {
        guard !isStoredInMemoryOnly else { return }
        let fileName = url.lastPathComponent
        if fileName.utf8.count > 255 {
            throw SwiftDataError(.configurationFileNameTooLong, "the store file name \(fileName.prefix(40))… is longer than 255 bytes")
        }
        if name.contains("/") || name.contains("\u{0}") || fileName.contains("\u{0}") {
            throw SwiftDataError(
                .configurationFileNameContainsInvalidCharacters, "the configuration name \"\(name)\" contains '/' or a NUL character")
        }
    }

    /// A description naming the store's location.
    public var debugDescription: String {
        "ModelConfiguration(\(name), \(isStoredInMemoryOnly ? "in memory" : url.path)\(allowsSave ? "" : ", read-only"))"
    }
}
