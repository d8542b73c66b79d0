"""The web for the agent's tools: a URL read and checked (``urls``), where it may connect
(``addresses``), the HTTP exchange made to the checked address (``client``), what a page becomes
for the model (``pages``) and the result it is given, marked as untrusted (``result``).

The web is where hostile text comes from: nothing here trusts a page, a header, a redirect or a
host's DNS answer."""
