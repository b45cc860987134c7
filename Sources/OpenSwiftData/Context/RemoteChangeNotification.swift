import Foundation

extension ModelContainer {
    /// Posted on `NotificationCenter.default`, with the container as object, after changes made
    /// elsewhere were written into the container's store: the changes of other devices that the
    /// sync engine pulled and applied. Local saves do not post it (they post
    /// ``ModelContext/didSave``).
    ///
    /// The same notification as Core Data's `NSPersistentStoreRemoteChange`, which SwiftData
    /// apps synced through CloudKit observe to refresh; on platforms without Core Data,
    /// `Notification.Name.NSPersistentStoreRemoteChange` names it, so that code compiles
    /// unchanged. `userInfo` holds the store's identifier under `NSStoreUUIDKey`, its file under
    /// `NSPersistentStoreURLKey` (absent for a store in memory), and under
    /// `NSPersistentHistoryTokenKey` the ``DefaultHistoryToken`` of the history transaction that
    /// wrote the changes, for `fetchHistory` to start from. It is posted on the thread that
    /// applied the changes.
    ///
    /// ```swift
    /// let token = NotificationCenter.default.addObserver(
    ///     forName: ModelContainer.remoteChangeNotification, object: container, queue: nil
    /// ) { _ in
    ///     print("other devices changed the store")
    /// }
    /// ```
    public static let remoteChangeNotification = Notification.Name("NSPersistentStoreRemoteChangeNotification")

    /// Posts ``remoteChangeNotification`` for changes just written.
    func postRemoteChange(historyToken: DefaultHistoryToken) {
        var userInfo: [String: Any] = [RemoteChangeKey.storeUUID: store.identifier]
        if let url = configurationList.first(where: { !$0.isStoredInMemoryOnly })?.url { userInfo[RemoteChangeKey.storeURL] = url }
        userInfo[RemoteChangeKey.historyToken] = historyToken
        NotificationCenter.default.post(name: Self.remoteChangeNotification, object: self, userInfo: userInfo)
    }
}

/// The `userInfo` keys of ``ModelContainer/remoteChangeNotification``: Core Data's.
enum RemoteChangeKey {
    static let storeUUID = "NSStoreUUID"
    static let storeURL = "NSPersistentStoreURLKey"
    static let historyToken = "historyToken"
}

#if !canImport(CoreData)
extension Notification.Name {
    /// ``ModelContainer/remoteChangeNotification`` under Core Data's name, for code written for
    /// SwiftData synced through CloudKit.
    public static let NSPersistentStoreRemoteChange = ModelContainer.remoteChangeNotification
}

/// The key of the store's identifier in ``ModelContainer/remoteChangeNotification``'s
/// `userInfo` (Core Data's name).
public let NSStoreUUIDKey = RemoteChangeKey.storeUUID
/// The key of the store's file URL in ``ModelContainer/remoteChangeNotification``'s
/// `userInfo` (Core Data's name).
public let NSPersistentStoreURLKey = RemoteChangeKey.storeURL
/// The key of the ``DefaultHistoryToken`` in ``ModelContainer/remoteChangeNotification``'s
/// `userInfo` (Core Data's name).
public let NSPersistentHistoryTokenKey = RemoteChangeKey.historyToken
#endif
