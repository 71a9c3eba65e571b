"""Development settings (``make run``): the project-local services as defaults. DEBUG is off
unless CS_DEBUG=true: its pages list every URL pattern and setting to whoever asks for a page
that does not exist."""

from config.settings._localenv import load_local_defaults

load_local_defaults()

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import REST_FRAMEWORK  # noqa: E402
from contextsvc.env import env_bool, env_networks, env_str  # noqa: E402

DEBUG = env_bool("CS_DEBUG", False)
# A fixed key is fine on a laptop: production settings refuse to start without a real one.
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "django-insecure-local-development-only-key")
CS_SANDBOX_IMAGE = env_str("CS_SANDBOX_IMAGE", "busybox:1.36")
REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"] = [
    "rest_framework.renderers.JSONRenderer",
    "rest_framework.renderers.BrowsableAPIRenderer",
]
# Static files are served from the apps' folders (WhiteNoise finders); collectstatic is for
# production images only.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
# A webhook receiver on this machine (a local chat bridge, a test receiver) may be reached.
CS_NOTIFY_ALLOW_NETWORKS = env_networks("CS_NOTIFY_ALLOW_NETWORKS", ["127.0.0.0/8", "::1"])
